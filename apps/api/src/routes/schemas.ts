import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, RunIdSchema } from '@tether/protocol';

/** `:id` of every run route: a run id, or 400. */
export const RunParamsSchema = Type.Object({ id: RunIdSchema });

/** Error answers every authenticated route can give. */
export const COMMON_ERRORS = {
  400: ErrorResponseSchema,
  401: ErrorResponseSchema,
  429: ErrorResponseSchema,
  500: ErrorResponseSchema,
} as const;
