import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type ModelCatalog, ModelCatalogSchema } from '@tether/protocol';
import type { ApiConfig } from '../../config.js';
import { COMMON_ERRORS } from '../schemas.js';

/** The catalog of `GET /v1/models`: names, providers and models only, never a key or a base URL. */
export function modelCatalog(
  config: Pick<ApiConfig, 'profiles' | 'defaultProfile' | 'allowReplay'>,
): ModelCatalog {
  return {
    profiles: config.profiles.map((profile) => ({
      name: profile.name,
      provider: profile.provider,
      model: profile.model ?? null,
      default: profile.name === config.defaultProfile,
    })),
    defaultProfile: config.defaultProfile ?? null,
    replay: config.allowReplay,
  };
}

/**
 * `GET /v1/models`: the model profiles a run may name, which one runs get by
 * default, and whether replay is allowed. The console and the CLI ask it
 * before they start something that needs a model, so a server without one
 * says so before anything is created.
 */
const modelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const catalog = modelCatalog(app.config);
  app.get(
    '/',
    {
      schema: {
        tags: ['models'],
        operationId: 'listModels',
        summary: 'The model profiles runs may name, the default one, and whether replay is allowed',
        response: { 200: ModelCatalogSchema, ...COMMON_ERRORS },
      },
    },
    async () => catalog,
  );
};

export default modelRoutes;
