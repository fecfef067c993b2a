import { RUN_LIMITS } from '@tether/protocol';
import { METADATA_INDEX_VALUE_MAX } from '@tether/queue';
import { ApiError } from '../../errors.js';

/** The most `metadata.<key>=<value>` pairs one listing takes. */
export const METADATA_FILTER_MAX_PAIRS = 8;

const PREFIX = 'metadata.';

/**
 * The metadata filter of `GET /v1/runs`: every `metadata.<key>=<value>` of
 * the query string, as `{ key: value }` (undefined when there is none). A key
 * of 1 to {@link RUN_LIMITS.metadataKeyMaxLength} characters, a value of at
 * most {@link METADATA_INDEX_VALUE_MAX}, given once, at most
 * {@link METADATA_FILTER_MAX_PAIRS} pairs; otherwise `ERR_VALIDATION` naming the field.
 */
export function metadataFilter(query: Record<string, unknown>): Record<string, string> | undefined {
  const filter: Record<string, string> = {};
  let count = 0;
  for (const [field, value] of Object.entries(query)) {
    if (!field.startsWith(PREFIX)) continue;
    const key = field.slice(PREFIX.length);
    const name = `querystring.${field}`;
    if (key.length === 0 || key.length > RUN_LIMITS.metadataKeyMaxLength) {
      throw new ApiError(
        'ERR_VALIDATION',
        `${name}: a metadata key must have 1 to ${RUN_LIMITS.metadataKeyMaxLength} characters.`,
      );
    }
    if (typeof value !== 'string') {
      throw new ApiError(
        'ERR_VALIDATION',
        `${name} must be given once (one value per key; pairs are ANDed).`,
      );
    }
    if (value.length > METADATA_INDEX_VALUE_MAX) {
      throw new ApiError(
        'ERR_VALIDATION',
        `${name} must have at most ${METADATA_INDEX_VALUE_MAX} characters (longer metadata values are not indexed).`,
      );
    }
    if (++count > METADATA_FILTER_MAX_PAIRS) {
      throw new ApiError(
        'ERR_VALIDATION',
        `querystring must have at most ${METADATA_FILTER_MAX_PAIRS} metadata.<key> filters.`,
      );
    }
    filter[key] = value;
  }
  return count === 0 ? undefined : filter;
}
