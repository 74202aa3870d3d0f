import type { Resource } from './client.js';

/** Where the status writer finds each of the three image kinds, Flux's v1 and pawl's own. */
export const RESOURCES = {
  flux: {
    ImageRepository: {
      group: 'image.toolkit.fluxcd.io',
      version: 'v1',
      plural: 'imagerepositories',
      kind: 'ImageRepository',
    },
    ImagePolicy: {
      group: 'image.toolkit.fluxcd.io',
      version: 'v1',
      plural: 'imagepolicies',
      kind: 'ImagePolicy',
    },
    ImageUpdateAutomation: {
      group: 'image.toolkit.fluxcd.io',
      version: 'v1',
      plural: 'imageupdateautomations',
      kind: 'ImageUpdateAutomation',
    },
  },
  pawl: {
    ImageRepository: {
      group: 'image.pawl.dev',
      version: 'v1alpha1',
      plural: 'imagerepositories',
      kind: 'ImageRepository',
    },
    ImagePolicy: {
      group: 'image.pawl.dev',
      version: 'v1alpha1',
      plural: 'imagepolicies',
      kind: 'ImagePolicy',
    },
    ImageUpdateAutomation: {
      group: 'image.pawl.dev',
      version: 'v1alpha1',
      plural: 'imageupdateautomations',
      kind: 'ImageUpdateAutomation',
    },
  },
} as const satisfies Record<string, Record<string, Resource>>;

const PLURALS: Record<string, string> = {
  ImageRepository: 'imagerepositories',
  ImagePolicy: 'imagepolicies',
  ImageUpdateAutomation: 'imageupdateautomations',
};

/** Where an image object of this `apiVersion` and kind is served (its status is written there). */
export function resourceOf(apiVersion: string, kind: string): Resource | undefined {
  const plural = PLURALS[kind];
  const slash = apiVersion.indexOf('/');
  if (!plural || slash < 0) return undefined;
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), plural, kind };
}
