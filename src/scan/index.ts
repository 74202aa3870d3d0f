/** Scanning ImageRepositories: the scanner, its registry clients, and formatting for people. */
export {
  scanRepository,
  scanRepositories,
  isScanDue,
  defaultReference,
  type ScanReport,
  type ScanDeps,
} from './scanner.js';
export { createScanClients, type ScanClients, type ScanClientOptions } from './clients.js';
