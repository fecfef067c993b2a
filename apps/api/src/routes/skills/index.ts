import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ErrorResponseSchema,
  PutSkillBodySchema,
  SKILL_LIMITS,
  SkillListSchema,
  SkillNameSchema,
  SkillSchema,
  SkillSummarySchema,
  type SkillWriteResult,
} from '@tether/protocol';
import { checkSkill } from '@tether/tools';
import { ApiError } from '../../errors.js';
import { COMMON_ERRORS } from '../schemas.js';

const SkillParamsSchema = Type.Object({ name: SkillNameSchema });

/** The message of a write refused by a limit. */
function limitMessage(result: Extract<SkillWriteResult, { refusal: 'count' | 'bytes' | 'files' }>): string {
  switch (result.refusal) {
    case 'count':
      return `The tenant has ${result.value} skills, the most it may have (TETHER_SKILLS_MAX_COUNT ${result.max}); delete one first.`;
    case 'bytes':
      return `The tenant's skills would hold ${result.value} bytes, over TETHER_SKILLS_MAX_BYTES (${result.max}).`;
    case 'files':
      return `The skill would have ${result.value} files; a skill holds at most ${result.max}.`;
  }
}

/**
 * `/v1/skills`: the tenant's skills, in the Agent Skills format. People
 * manage them here (and pin them: the agent cannot change a pinned skill);
 * runs with the `skill` toolset read them, and write their own through
 * `skill_manage`.
 */
const skillRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['skills'],
        operationId: 'listSkills',
        summary: "List the caller's skills, by name",
        description: "Every skill's summary (no files), and the tenant's totals and limits.",
        response: { 200: SkillListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const index = await app.skills.list(request.tenant);
      return {
        data: index.skills,
        count: index.skills.length,
        bytes: index.bytes,
        maxCount: app.skills.limits.maxCount,
        maxBytes: app.skills.limits.maxBytes,
      };
    },
  );

  app.get(
    '/:name',
    {
      schema: {
        tags: ['skills'],
        operationId: 'getSkill',
        summary: 'Read a skill and every file of it',
        params: SkillParamsSchema,
        response: { 200: SkillSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const skill = await app.skills.get(request.tenant, request.params.name);
      if (!skill) throw new ApiError('ERR_SKILL_NOT_FOUND', `No skill ${request.params.name}.`);
      return skill;
    },
  );

  app.put(
    '/:name',
    {
      bodyLimit: Math.max(app.config.bodyLimit, SKILL_LIMITS.bodyMaxBytes),
      schema: {
        tags: ['skills'],
        operationId: 'putSkill',
        summary: 'Create or replace a skill',
        description:
          'The whole skill: `files` maps each path inside the skill folder to its UTF-8 content, and must hold `SKILL.md` (YAML frontmatter with `name`, equal to `:name`, and `description`, then a body). It replaces every file of an existing skill. `pinned` (left out: a new skill is not pinned, an existing one keeps its setting) keeps the agent from changing or deleting it. 201 when created, 200 when replaced, with the summary. 400 `ERR_SKILL_INVALID` lists every problem of the format; 409 `ERR_SKILLS_LIMIT` names the limit.',
        params: SkillParamsSchema,
        body: PutSkillBodySchema,
        response: {
          200: SkillSummarySchema,
          201: SkillSummarySchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const { files, pinned } = request.body;
      const checked = checkSkill(name, files);
      if (!checked.ok) {
        throw new ApiError(
          'ERR_SKILL_INVALID',
          `The skill ${name} was refused: ${checked.problems.join(' ')}`,
        );
      }
      const result = await app.skills.save(request.tenant, {
        name,
        mode: 'replace',
        set: files,
        description: checked.document.frontmatter.description,
        pinned,
      });
      if (!result.ok) {
        if (result.refusal === 'count' || result.refusal === 'bytes' || result.refusal === 'files') {
          throw new ApiError('ERR_SKILLS_LIMIT', limitMessage(result));
        }
        // A replace is refused only by a limit.
        throw new Error(`saveSkill refused a replace: ${result.refusal}`);
      }
      reply.header('location', `/v1/skills/${name}`);
      return reply.code(result.created ? 201 : 200).send(result.skill);
    },
  );

  app.delete(
    '/:name',
    {
      schema: {
        tags: ['skills'],
        operationId: 'deleteSkill',
        summary: 'Delete a skill',
        description: 'Pinned or not: 204. Runs that have it loaded keep what they read.',
        params: SkillParamsSchema,
        response: { 204: Type.Null(), 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const deleted = await app.skills.delete(request.tenant, request.params.name);
      if (deleted === 'missing')
        throw new ApiError('ERR_SKILL_NOT_FOUND', `No skill ${request.params.name}.`);
      return reply.code(204).send(null);
    },
  );
};

export default skillRoutes;
