export type { SkillIndex, SkillLimits, SkillSnapshot, SkillStoreOptions } from './skill-store.js';
export { SkillStore } from './skill-store.js';
