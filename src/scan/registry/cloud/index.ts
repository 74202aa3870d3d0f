/**
 * Registry credentials from the cloud, for ImageRepositories with `provider: aws | gcp | azure`
 * (as Flux's fluxcd/pkg auth): each provider turns the machine's cloud identity into a user name
 * and password for the registry, with the time they expire. The registry client asks again when
 * they are about to expire.
 */
import { RuntimeError } from '../../../util/index.js';
import type { Credentials } from '../credentials.js';
import { CLOUD_PROVIDERS, providerHostProblem, type CloudProvider } from '../../../image/index.js';
import { ecrCredentials } from './aws.js';
import { acrCredentials } from './azure.js';
import { gcpRegistryCredentials } from './gcp.js';
import type { CloudDeps } from './http.js';

export { defaultCloudDeps, type CloudDeps, type CloudEndpoints } from './http.js';
export { signRequest, type AwsCredentials } from './sigv4.js';
export { awsCredentials, parseIni } from './aws.js';
export { gcpAccessToken } from './gcp.js';
export { azureAccessToken, ACR_TOKEN_USER } from './azure.js';

export { CLOUD_PROVIDERS, providerHostProblem, type CloudProvider };

/** Credentials for `registry`, reached at `origin`; asked again after `expiresAt`. */
export type CredentialSource = (registry: string, origin: string) => Promise<Credentials>;

export function cloudCredentialSource(provider: CloudProvider, deps: CloudDeps): CredentialSource {
  return async (registry, origin) => {
    const problem = providerHostProblem(provider, registry);
    if (problem) throw new RuntimeError(problem);
    switch (provider) {
      case 'aws':
        return ecrCredentials(deps, registry);
      case 'gcp':
        return gcpRegistryCredentials(deps, registry);
      case 'azure':
        return acrCredentials(deps, registry, origin);
    }
  };
}
