import { posix, win32 } from 'node:path';
import { checkModelSpec } from '@tether/agent/spec';
import type { CreateRunBody } from '@tether/protocol';
import { pathLengthProblem } from '@tether/tools';
import { availableToolsets } from '../../catalog.js';
import type { ApiConfig } from '../../config.js';
import { ApiError } from '../../errors.js';

/**
 * What the schema cannot say about a new run, checked before it is queued so
 * the client hears it now (400) rather than from a failed run later: the
 * toolsets exist and have tools, the model spec names a configured profile (or
 * replay, when the server allows it), and the files stay inside the workspace
 * with names the file system can hold.
 * Model errors are `@tether/agent`'s own (`ERR_MODEL_*`, status 400).
 */
export function checkSubmission(
  body: CreateRunBody,
  config: Pick<ApiConfig, 'profiles' | 'defaultProfile' | 'allowReplay'>,
): void {
  if (body.toolsets) {
    const available = availableToolsets();
    const unknown = body.toolsets.filter((toolset) => !available.includes(toolset));
    if (unknown.length > 0) {
      throw new ApiError(
        'ERR_TOOLSET_UNKNOWN',
        `Unknown or unavailable toolset${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; available: ${available.join(', ')}.`,
      );
    }
  }
  checkModelSpec(body.model, {
    profiles: config.profiles,
    defaultProfile: config.defaultProfile,
    allowReplay: config.allowReplay,
  });
  for (const path of Object.keys(body.files ?? {})) {
    const problem = filePathProblem(path);
    if (problem) throw new ApiError('ERR_FILES_INVALID', `files: ${JSON.stringify(path)} ${problem}.`);
  }
}

/** Why a submitted file path cannot be written inside the workspace, or undefined. */
export function filePathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'contains a NUL byte';
  if (posix.isAbsolute(path) || win32.isAbsolute(path))
    return 'is absolute; give a path relative to the workspace';
  const normal = posix.normalize(path.replaceAll('\\', '/'));
  if (normal === '.' || normal === './' || normal.endsWith('/')) return 'names a directory, not a file';
  if (normal === '..' || normal.startsWith('../')) return 'leads outside the workspace';
  return pathLengthProblem(path);
}
