/**
 * `@tether/agent/spec`: what a server needs to check runs at submit (the
 * model profiles of its environment, and a run's model spec against them)
 * without loading a model SDK. The API imports this entry, never the main one.
 */
export { AgentError } from './errors.js';
export type { ModelProfile } from './providers/model-profiles.js';
export {
  DEFAULT_MODELS,
  describeProfile,
  MODEL_SETUP_HINT,
  profilesFromEnv,
  readProfilesFromEnv,
} from './providers/model-profiles.js';
export type { ModelChoice, ModelSpecOptions } from './providers/model-spec.js';
export { checkModelSpec } from './providers/model-spec.js';
