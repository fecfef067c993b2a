import { RUN_LIMITS } from '@tether/protocol';
import { METADATA_INDEX_VALUE_MAX } from '@tether/store/runs';
import { ApiError } from '../../errors.js';

/** The most `metadata.<key>=<value>` pairs one listing takes. */
export const METADATA_FILTER_MAX_PAIRS = 8;

const PREFIX = 'metadata.';

/** A key a listing filters on: a plain name. */
const PLAIN_KEY = new RegExp(`^[A-Za-z0-9_.-]{1,${RUN_LIMITS.metadataKeyMaxLength}}$`);

/**
 * The metadata filter of `GET /v1/runs`: every `metadata.<key>=<value>` of
 * the query string, as `{ key: value }` (undefined when there is none). A key
 * that is a plain name (1 to {@link RUN_LIMITS.metadataKeyMaxLength} of
 * `A-Z a-z 0-9 _ . -`, not `__proto__`), a value of at most
 * {@link METADATA_INDEX_VALUE_MAX}, given once, at most
 * {@link METADATA_FILTER_MAX_PAIRS} pairs; otherwise `ERR_VALIDATION` naming
 * the field and the rule. A listing filters by every pair given or is
 * refused, never by fewer (`__proto__` once set the filter's prototype
 * instead of a key: no filter, the tenant's whole list).
 */
export function metadataFilter(query: Record<string, unknown>): Record<string, string> | undefined {
  const pairs: [string, string][] = [];
  for (const [field, value] of Object.entries(query)) {
    if (!field.startsWith(PREFIX)) continue;
    const key = field.slice(PREFIX.length);
    const name = `querystring.${field}`;
    // `__proto__` is no run's key: a JSON body holding it is refused (ERR_FORBIDDEN_PROPERTY).
    if (!PLAIN_KEY.test(key) || key === '__proto__') {
      throw new ApiError(
        'ERR_VALIDATION',
        `${name}: a metadata key to filter on must be a plain name: 1 to ${RUN_LIMITS.metadataKeyMaxLength} characters among A-Z, a-z, 0-9, "_", "." and "-", and not "__proto__".`,
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
    if (pairs.push([key, value]) > METADATA_FILTER_MAX_PAIRS) {
      throw new ApiError(
        'ERR_VALIDATION',
        `querystring must have at most ${METADATA_FILTER_MAX_PAIRS} metadata.<key> filters.`,
      );
    }
  }
  // Own properties whatever the names (`Object.fromEntries` never calls a setter).
  return pairs.length === 0 ? undefined : Object.fromEntries(pairs);
}
