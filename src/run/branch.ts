/**
 * A templated `spec.git.push.branch`: rendered over Flux's commit-message data (the automation,
 * the changed objects and values), then made a valid branch name (git check-ref-format's rules),
 * so a tag like `1.2.3+build` or a setter `ns:name` still names a branch.
 */
import {
  fluxTemplateData,
  renderCommitMessage,
  type ImageUpdateAutomation,
  type TemplateChange,
} from '../config/index.js';
import { RuntimeError } from '../util/index.js';

export function sanitizeBranch(raw: string): string {
  return raw
    .trim()
    .replace(/[\s~^:?*[\\\x00-\x1f\x7f]+/g, '-')
    .replace(/@\{/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/\/{2,}/g, '/')
    .split('/')
    .map((part) =>
      part
        .replace(/^[.-]+/, '')
        .replace(/(?:\.lock)+$/i, '')
        .replace(/\.+$/, ''),
    )
    .filter((part) => part.length > 0)
    .join('/')
    .slice(0, 200);
}

export function branchName(
  template: string,
  automation: ImageUpdateAutomation,
  changes: readonly TemplateChange[],
): string {
  const data = fluxTemplateData(
    automation.metadata,
    changes,
    automation.spec.git.commit.messageTemplateValues,
  );
  const name = sanitizeBranch(renderCommitMessage(template, data));
  if (!name)
    throw new RuntimeError(
      `ImageUpdateAutomation ${automation.metadata.namespace}/${automation.metadata.name}: spec.git.push.branch rendered to an empty branch name`,
    );
  return name;
}
