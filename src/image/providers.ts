/**
 * Which registry hosts each cloud provider serves (fluxcd/pkg auth's registry patterns). Both the
 * configuration (`provider` checked against `spec.image` when loading) and the registry client's
 * cloud credentials need them, so they live with the other rules about image names.
 */

export const CLOUD_PROVIDERS = ['aws', 'gcp', 'azure'] as const;
export type CloudProvider = (typeof CLOUD_PROVIDERS)[number];

/** fluxcd/pkg auth/aws registryPattern, anchored: `ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com[.cn]`, … */
export const ECR_HOST =
  /^([0-9]+)\.dkr[.-]ecr(?:-fips)?\.([^/.]+)\.(amazonaws\.com(?:\.cn)?|amazonaws\.eu|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov|on\.aws)$/;
export const PUBLIC_ECR = 'public.ecr.aws';
export const GCP_HOST = /^(((.+\.)?gcr\.io)|(.+-docker\.pkg\.dev)|(docker\.s3nsregistry\.fr))$/;
export const AZURE_HOST = /^.+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)$/;

/** The region of an ECR host (us-east-1 for ECR Public); undefined when the host is not ECR. */
export function ecrRegion(host: string): string | undefined {
  if (host === PUBLIC_ECR) return 'us-east-1';
  return ECR_HOST.exec(host)?.[2];
}

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
