import { Type } from '@sinclair/typebox';
import { SessionIdSchema } from '@tether/protocol';

export const SessionParamsSchema = Type.Object({ id: SessionIdSchema });

export const TokenQuerySchema = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});
