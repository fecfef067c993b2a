/**
 * The New run form's request: what the fields say, as the `POST /v1/runs`
 * body the form shows and sends. Pure, so that the body shown is the body
 * sent. The API stays the judge of bounds (a max steps of 5,000 is sent and
 * its 400 shown); here only what cannot be written as JSON is refused: a
 * number field that is not a whole number, an "Advanced" text that is not a
 * JSON object. And one refusal known before sending: no model, on a server
 * that has none by default (`missingModel`).
 */
import type { Locale, ModelCatalog, ModelSpec } from '@tether/protocol';

/** What the form holds, as typed. */
export interface NewRunForm {
  input: string;
  /** The toolsets checked, in the catalog's order; undefined until the catalog is read (the field is then left out). */
  toolsets: readonly string[] | undefined;
  /** Workspace files, path → content, in the order added. */
  files: readonly { path: string; content: string }[];
  /** '' leaves the server's default. */
  locale: Locale | '';
  /** Seconds, as typed; '' leaves the server's default. */
  clarifyTimeout: string;
  /** As typed; '' leaves the server's default. */
  maxSteps: string;
  /** A JSON object merged into the body (`{"model": {…}}`, `{"metadata": {…}}`); '' for none. */
  advanced: string;
  /** The request's model as the form chose it (the scripted example's replay); undefined leaves it to Advanced or the API. */
  model: ModelSpec | undefined;
}

export const EMPTY_FORM: NewRunForm = {
  input: '',
  toolsets: undefined,
  files: [],
  locale: '',
  clarifyTimeout: '',
  maxSteps: '',
  advanced: '',
  model: undefined,
};

/** A field the form cannot turn into JSON, and why (for the message under it). */
export type FieldProblem = { field: 'clarifyTimeout' | 'maxSteps' | 'advanced'; message: string };

export type NewRunRequest = { body: Record<string, unknown>; problems: FieldProblem[] };

/** The body the form sends, and the problems that keep it from being sent. */
export function buildRequest(form: NewRunForm): NewRunRequest {
  const problems: FieldProblem[] = [];
  const body: Record<string, unknown> = { input: form.input };
  if (form.toolsets !== undefined) body.toolsets = [...form.toolsets];
  if (form.locale !== '') body.locale = form.locale;
  const seconds = wholeNumber(form.clarifyTimeout);
  if (seconds === 'invalid') {
    problems.push({ field: 'clarifyTimeout', message: 'Clarify timeout must be a whole number of seconds.' });
  } else if (seconds !== undefined) {
    body.clarify = { timeoutMs: seconds * 1_000 };
  }
  const maxSteps = wholeNumber(form.maxSteps);
  if (maxSteps === 'invalid') {
    problems.push({ field: 'maxSteps', message: 'Max steps must be a whole number.' });
  } else if (maxSteps !== undefined) {
    body.limits = { maxSteps };
  }
  if (form.files.length > 0)
    body.files = Object.fromEntries(form.files.map((file) => [file.path, file.content]));
  if (form.model !== undefined) body.model = form.model;
  const advanced = parseAdvanced(form.advanced);
  if (typeof advanced === 'string') problems.push({ field: 'advanced', message: advanced });
  else if (advanced !== undefined) mergeInto(body, advanced);
  return { body, problems };
}

/**
 * Why `body` would be refused for want of a model on a server of `models`:
 * it names none (no `model` object) and the server has no default profile.
 * Undefined when it names one (the API judges which), when the server has a
 * default, and while `models` is unknown (an older API without
 * `GET /v1/models` is left to answer for itself, as before).
 */
export function missingModel(
  body: Record<string, unknown>,
  models: Pick<ModelCatalog, 'profiles' | 'defaultProfile' | 'replay'> | undefined,
): string | undefined {
  if (models === undefined || models.defaultProfile !== null || isPlainObject(body.model)) return undefined;
  const profile = models.profiles[0]?.name;
  if (profile !== undefined)
    return `This server has no default model, and this run names none: name a profile in Advanced, such as {"model": {"profile": "${profile}"}}.`;
  return models.replay
    ? 'No model is configured on this server, and this run names none: try the scripted example, or start the server with a model (see above).'
    : 'No model is configured on this server, and this run names none: start the server with a model (see above).';
}

/** Adds `path` with `content`, replacing a file of the same path in its place. */
export function withFile(
  files: NewRunForm['files'],
  path: string,
  content: string,
): { path: string; content: string }[] {
  const at = files.findIndex((file) => file.path === path);
  if (at === -1) return [...files, { path, content }];
  return files.map((file, index) => (index === at ? { path, content } : file));
}

function wholeNumber(text: string): number | 'invalid' | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  if (!/^-?\d+$/.test(trimmed)) return 'invalid';
  const value = Number(trimmed);
  return Number.isSafeInteger(value) ? value : 'invalid';
}

/** The Advanced field: undefined when empty, the object, or the message saying what is wrong. */
function parseAdvanced(text: string): Record<string, unknown> | string | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `Advanced is not valid JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (!isPlainObject(value))
    return 'Advanced must be a JSON object, such as {"metadata": {"ticket": "T-1"}}.';
  return value;
}

/**
 * Merges `extra` into `target`: objects on both sides are merged field by
 * field (so `{"clarify": {"mode": "return"}}` keeps the form's timeout),
 * anything else from `extra` replaces the form's value.
 */
function mergeInto(target: Record<string, unknown>, extra: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(extra)) {
    // Own fields only, and defined rather than assigned: a "__proto__" key stays a field (which the
    // API refuses), never the body's prototype.
    const current = Object.hasOwn(target, key) ? target[key] : undefined;
    let next = value;
    if (isPlainObject(current) && isPlainObject(value)) {
      next = { ...current };
      mergeInto(next as Record<string, unknown>, value);
    }
    Object.defineProperty(target, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
