import {
  type CreateSessionRunBody,
  CreateSessionRunBodySchema,
  TetherError,
  WS_CLIENT_FRAME_SCHEMAS,
  WS_CLIENT_FRAME_TYPES,
  type WsClientFrame,
  type WsClientFrameType,
} from '@tether/protocol';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import secureJson from 'secure-json-parse';
import { ApiError } from '../../errors.js';
import { jsonDeeperThan } from '../../json-depth.js';
import { describeValidation, mainIssue } from '../../plugins/errors.js';
import { replayScriptProblem } from '../../plugins/replay-problem.js';

/**
 * Client frames of the gateway, read as request bodies are (see the validation
 * plugin): JSON text, no `__proto__`, nesting bounded, each frame checked
 * against its type's schema with no coercion and no unknown fields. A frame
 * that fails is `ERR_WS_FRAME`, naming the field; a `message`'s `options` are
 * a run's body and fail as one does (`ERR_VALIDATION`, or `ERR_MODEL_REPLAY_SCRIPT_INVALID` for a
 * malformed replay script).
 */
// verbose: as the validation plugin's, so a value outside a union of literals is told them.
const ajv = new Ajv({
  removeAdditional: false,
  allErrors: false,
  strict: false,
  coerceTypes: false,
  verbose: true,
});
addFormats.default(ajv);

const validators = Object.fromEntries(
  WS_CLIENT_FRAME_TYPES.map((type) => [type, ajv.compile(WS_CLIENT_FRAME_SCHEMAS[type])]),
) as Record<WsClientFrameType, ValidateFunction>;
const runBody = ajv.compile(CreateSessionRunBodySchema);

const frameError = (message: string) => new ApiError('ERR_WS_FRAME', message);

/** The frame in a WebSocket message, or `ERR_WS_FRAME` saying what is wrong with it. */
export function parseClientFrame(data: Buffer, isBinary: boolean, maxDepth: number): WsClientFrame {
  if (isBinary) throw frameError('Frames are JSON text frames; this one is binary.');
  const text = data.toString('utf8');
  if (jsonDeeperThan(text, maxDepth)) {
    throw frameError(`The frame nests arrays and objects more than ${maxDepth} levels deep.`);
  }
  let frame: unknown;
  try {
    frame = secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw frameError(`The frame is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
    throw frameError('A frame is a JSON object with a "type".');
  }
  const type = (frame as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.hasOwn(validators, type)) {
    throw frameError(
      `frame.type must be one of ${WS_CLIENT_FRAME_TYPES.join(', ')}; got ${JSON.stringify(type ?? null)}.`,
    );
  }
  const validate = validators[type as WsClientFrameType];
  if (!validate(frame)) {
    const issues = validate.errors ?? [];
    throw frameError(`${describeValidation(mainIssue(issues), 'frame', issues)}.`);
  }
  return frame as WsClientFrame;
}

/** A `message` frame as the body of `POST /v1/sessions/:id/runs`: its `options`, and `content` as `input`. */
export function messageRunBody(frame: Extract<WsClientFrame, { type: 'message' }>): CreateSessionRunBody {
  const options = frame.options ?? {};
  if (Object.hasOwn(options, 'input')) {
    throw new ApiError(
      'ERR_VALIDATION',
      'frame.options.input is not a known field: the input is frame.content.',
    );
  }
  const body = { ...options, input: frame.content };
  if (!runBody(body)) {
    // A malformed replay script is told by turn and field, as in a request body.
    const replay = replayScriptProblem(runBody.errors ?? [], body, 'frame.options');
    if (replay !== undefined) {
      throw new TetherError('ERR_MODEL_REPLAY_SCRIPT_INVALID', replay, { statusCode: 400 });
    }
    throw new ApiError(
      'ERR_VALIDATION',
      `${describeValidation(mainIssue(runBody.errors ?? []), 'frame.options', runBody.errors ?? [])}.`,
    );
  }
  return body as CreateSessionRunBody;
}
