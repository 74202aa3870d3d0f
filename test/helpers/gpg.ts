/** Test signing keys made with the real gpg. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** A new ed25519 signing key in the keyring at `home`; its armored secret key and fingerprint. */
export async function gpgKey(home: string, passphrase: string): Promise<{ armored: string; fpr: string }> {
  const env = { ...process.env, GNUPGHOME: home };
  await execFileP(
    'gpg',
    [
      '--batch',
      '--pinentry-mode',
      'loopback',
      '--passphrase',
      passphrase,
      '--quick-gen-key',
      'Pawl Test <pawl@example.com>',
      'ed25519',
      'sign',
      'never',
    ],
    { env },
  );
  const list = await execFileP('gpg', ['--batch', '--with-colons', '--list-secret-keys'], { env });
  const fpr = list.stdout
    .split('\n')
    .find((l) => l.startsWith('fpr:'))!
    .split(':')[9]!;
  const exp = await execFileP(
    'gpg',
    [
      '--batch',
      '--pinentry-mode',
      'loopback',
      '--passphrase',
      passphrase,
      '--armor',
      '--export-secret-keys',
      fpr,
    ],
    { env },
  );
  return { armored: exp.stdout, fpr };
}
