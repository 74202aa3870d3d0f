import { z } from 'zod';
import { objectName, stringMap, tolerated } from './common.js';

/** The label Kubernetes (1.21 and later) puts on every namespace, with its name as the value. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * A `v1` Namespace: pawl reads only its name and labels, which `accessFrom.namespaceSelectors`
 * of an ImageRepository in another namespace are matched against.
 */
export const namespaceSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Namespace'),
  metadata: z.looseObject({ name: objectName, labels: stringMap.default({}) }),
  spec: tolerated,
  status: tolerated,
});
