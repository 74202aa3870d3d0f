/**
 * Worker thread for `scanTree`: parses a share of the screened files so that a large tree uses
 * a second core. Receives `{ text, file }[]`, answers with `findMarkers` results in order.
 */
import { parentPort } from 'node:worker_threads';
import { findMarkers } from './markers.js';

parentPort?.on('message', (jobs: { text: string; file: string }[]) => {
  parentPort?.postMessage(jobs.map((j) => findMarkers(j.text, j.file)));
});
