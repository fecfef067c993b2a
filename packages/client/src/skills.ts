import type { PutSkillBody, Skill, SkillList, SkillSummary } from '@tether/protocol';
import { invalidOption, isRecord, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec } from './request.js';

/** What the skills API needs of the client that owns it. */
export interface SkillTransport {
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
}

/**
 * `client.skills`: the tenant's skills, in the Agent Skills format. Runs with
 * the `skill` toolset see their index and load them; people manage them here.
 *
 * ```ts
 * await client.skills.put('deploy', { files: { 'SKILL.md': text, 'scripts/go.sh': script }, pinned: true });
 * const { data } = await client.skills.list();
 * ```
 */
export class TetherSkills {
  readonly #transport: SkillTransport;

  constructor(transport: SkillTransport) {
    this.#transport = transport;
  }

  /** `GET /v1/skills`: every skill's summary, by name, and the tenant's totals and limits. */
  async list(options: RequestOptions = {}): Promise<SkillList> {
    const result = await this.#transport.json({
      method: 'GET',
      path: '/v1/skills',
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as SkillList;
    throw new TetherProtocolError('GET /v1/skills answered without a data array');
  }

  /** `GET /v1/skills/:name`: the skill and every file of it (`TetherNotFoundError` when there is none). */
  async get(name: string, options: RequestOptions = {}): Promise<Skill> {
    const path = skillPath(name);
    const result = await this.#transport.json({
      method: 'GET',
      path,
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && isRecord(result.files)) return result as unknown as Skill;
    throw new TetherProtocolError(`GET ${path} answered without files`);
  }

  /**
   * `PUT /v1/skills/:name`: creates the skill or replaces every file of it.
   * A format problem is a `TetherApiError` `ERR_SKILL_INVALID` naming each; a
   * tenant limit a `TetherConflictError` (`ERR_SKILLS_LIMIT`).
   */
  async put(name: string, body: PutSkillBody, options: RequestOptions = {}): Promise<SkillSummary> {
    const path = skillPath(name);
    const result = await this.#transport.json({
      method: 'PUT',
      path,
      body,
      signal: options.signal,
      // The same whole skill again is the same skill.
      idempotent: true,
    });
    if (isRecord(result) && typeof result.version === 'number') return result as unknown as SkillSummary;
    throw new TetherProtocolError(`PUT ${path} answered without a version`);
  }

  /** `DELETE /v1/skills/:name` (`TetherNotFoundError` when there is none). */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.json({
      method: 'DELETE',
      path: skillPath(name),
      signal: options.signal,
      // Sent again after a lost connection, a delete that happened would answer 404.
      idempotent: false,
    });
  }
}

function skillPath(name: string): string {
  if (typeof name !== 'string' || name === '') throw invalidOption('skill name must be a non-empty string');
  return `/v1/skills/${encodeURIComponent(name)}`;
}
