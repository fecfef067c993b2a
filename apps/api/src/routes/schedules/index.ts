import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import scheduleActionRoutes from './actions.js';
import createScheduleRoute from './create.js';
import readScheduleRoutes from './read.js';
import scheduleRunsRoute from './runs.js';
import updateScheduleRoutes from './update.js';

/**
 * `/v1/schedules`: a tenant's schedules, each a run submitted at the ticks of a cron pattern or an
 * interval. A schedule belongs to the caller's tenant: another tenant's name is not found. The API
 * keeps the record and the BullMQ job scheduler; the workers fire the ticks
 * (docs/architecture.md, "Schedules").
 */
const scheduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(createScheduleRoute);
  await app.register(readScheduleRoutes);
  await app.register(updateScheduleRoutes);
  await app.register(scheduleActionRoutes);
  await app.register(scheduleRunsRoute);
};

export default scheduleRoutes;
