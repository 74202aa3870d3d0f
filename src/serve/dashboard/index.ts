/**
 * The dashboard (docs/dashboard.md): its routes on the admin listener, the admin token, and the
 * overview and timeline it computes from the store and the running configuration.
 */
export {
  AdminAuth,
  dashboardUrl,
  locateWeb,
  logDashboard,
  prepareDashboard,
  registerDashboard,
  type DashboardOptions,
  type DashboardSetup,
  type WebSource,
} from './routes.js';
export { calmWords, foldAttention, markerState } from './attention.js';
export { overview, RECENT_UPGRADE_MS } from './overview.js';
export { foldScanRows, shownCounts, tagPart, timeline, TAG_NAMES_SHOWN } from './timeline.js';
export { webBuildOptions, bundleWebSources } from './web-build.js';
export * from './types.js';
