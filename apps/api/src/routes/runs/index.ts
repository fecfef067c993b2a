import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import approvalRoutes from './approvals/index.js';
import cancelRunRoute from './cancel.js';
import clarifyRoutes from './clarify/index.js';
import createRunRoute from './create.js';
import deleteRunRoute from './delete.js';
import eventRoutes from './events/index.js';
import fileRoutes from './files/index.js';
import getRunRoute from './get.js';
import listRunsRoute from './list.js';
import runMessagesRoute from './messages.js';
import rescheduleRunRoute from './reschedule.js';
import retryRunRoute from './retry.js';
import toolOutputRoutes from './tool-outputs/index.js';

/** `/v1/runs`: submit, list, read, reschedule and cancel runs; events, clarify and files are sub-resources. */
const runRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(createRunRoute);
  await app.register(listRunsRoute);
  await app.register(getRunRoute);
  await app.register(cancelRunRoute);
  await app.register(deleteRunRoute);
  await app.register(rescheduleRunRoute);
  await app.register(retryRunRoute);

  await app.register(eventRoutes);
  await app.register(clarifyRoutes);
  await app.register(toolOutputRoutes);
  await app.register(approvalRoutes);
  await app.register(runMessagesRoute);
  await app.register(fileRoutes);
};

export default runRoutes;
