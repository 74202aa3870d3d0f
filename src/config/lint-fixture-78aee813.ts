// A configuration module reaching up into run/: the layer rule forbids it.
import type { RunReport } from '../run/index.js';

export type Leaked = RunReport;
