import type { MemoryAccess } from '@tether/tools';
import type { AttemptContext } from './context.js';
import type { Prepared } from './prepare.js';

/** What the memory tools of the run reach: its own scope of its own tenant, nothing else. */
export function memoryAccess(
  ctx: Pick<AttemptContext, 'memory'>,
  prepared: Pick<Prepared, 'tenant' | 'memoryScope'>,
): MemoryAccess | undefined {
  const { memory } = ctx;
  const { tenant, memoryScope: scope } = prepared;
  if (!memory || scope === undefined) return undefined;
  return {
    scope,
    save: (draft) => memory.save(tenant, scope, draft),
    recall: (query, limit) => memory.recall(tenant, scope, query, limit),
  };
}
