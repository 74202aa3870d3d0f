/** The strategy of an ImagePolicy's `spec.policy` (Flux's `newPolicer`). */
import type { ImagePolicy } from '../config/index.js';
import { alphabeticalStrategy } from './alphabetical.js';
import { newestBuildStrategy } from './newestBuild.js';
import { numericalStrategy } from './numerical.js';
import { semverStrategy } from './semver.js';
import type { Strategy } from './strategy.js';

export function strategyFor(policy: ImagePolicy['spec']['policy']): Strategy<unknown> {
  switch (policy.strategy) {
    case 'semver':
      return semverStrategy(policy.range) as Strategy<unknown>;
    case 'alphabetical':
      return alphabeticalStrategy(policy.order) as Strategy<unknown>;
    case 'numerical':
      return numericalStrategy(policy.order) as Strategy<unknown>;
    case 'newestBuild':
      return newestBuildStrategy() as Strategy<unknown>;
  }
}
