/**
 * Registry credentials from the cloud, for ImageRepositories with `provider: aws | gcp | azure`
 * (as Flux's fluxcd/pkg auth): each provider turns the machine's cloud identity into a user name
 * and password for the registry, with the time they expire. The registry client asks again when
 * they are about to expire.
 */
import { RuntimeError } from '../../../util/errors.js';
import type { Credentials } from '../credentials.js';
import { ecrCredentials, ecrRegion, ECR_HOST, PUBLIC_ECR } from './aws.js';
import { acrCredentials, AZURE_HOST } from './azure.js';
import { GCP_HOST, gcpRegistryCredentials } from './gcp.js';
import type { CloudDeps } from './http.js';

export { defaultCloudDeps, type CloudDeps, type CloudEndpoints } from './http.js';
export { signRequest, type AwsCredentials } from './sigv4.js';
export { awsCredentials, parseIni } from './aws.js';
export { gcpAccessToken } from './gcp.js';
export { azureAccessToken, ACR_TOKEN_USER } from './azure.js';

export const CLOUD_PROVIDERS = ['aws', 'gcp', 'azure'] as const;
export type CloudProvider = (typeof CLOUD_PROVIDERS)[number];

/** Credentials for `registry`, reached at `origin`; asked again after `expiresAt`. */
export type CredentialSource = (registry: string, origin: string) => Promise<Credentials>;

/**
 * Why `host` cannot be used with `provider` (Flux's registry patterns), or undefined. pawl
 * checks this when loading, where Flux fails at the first scan.
 */
export function providerHostProblem(provider: CloudProvider, host: string): string | undefined {
  switch (provider) {
    case 'aws':
      return ecrRegion(host) === undefined
        ? `provider aws needs an Amazon ECR image (ACCOUNT.dkr.ecr.REGION.amazonaws.com/… or ${PUBLIC_ECR}/…); ${host} does not match ${ECR_HOST.source}`
        : undefined;
    case 'gcp':
      return GCP_HOST.test(host)
        ? undefined
        : `provider gcp needs a Google registry (gcr.io, *.gcr.io, *-docker.pkg.dev); ${host} does not match ${GCP_HOST.source}`;
    case 'azure':
      return AZURE_HOST.test(host)
        ? undefined
        : `provider azure needs an Azure Container Registry (*.azurecr.io, .cn, .de, .us); ${host} does not match ${AZURE_HOST.source}`;
  }
}

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
