import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import createSessionRoute from './create.js';
import deleteSessionRoute from './delete.js';
import sessionEventsRoute from './events.js';
import getSessionRoute from './get.js';
import listSessionsRoute from './list.js';
import sessionMessagesRoute from './messages.js';
import sessionRunsRoute from './runs.js';

/** `/v1/sessions`: conversations, whose runs follow one another with the transcript as their history. */
const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(createSessionRoute);
  await app.register(listSessionsRoute);
  await app.register(getSessionRoute);
  await app.register(deleteSessionRoute);
  await app.register(sessionRunsRoute);
  await app.register(sessionMessagesRoute);
  await app.register(sessionEventsRoute);
};

export default sessionRoutes;
