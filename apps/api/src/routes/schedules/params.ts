import { Type } from '@sinclair/typebox';
import { ScheduleNameSchema } from '@tether/protocol';

export const ScheduleParamsSchema = Type.Object({ name: ScheduleNameSchema });
