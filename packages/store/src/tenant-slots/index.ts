export type { SlotTaken, TenantSlotsOptions } from './tenant-slots.js';
export { TenantSlots } from './tenant-slots.js';
