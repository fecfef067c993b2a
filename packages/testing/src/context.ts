import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** The Redis URL that the integration project's global setup started or found. */
export function testRedisUrl(): string {
  const url = inject('redisUrl');
  if (!url) throw new Error('No redisUrl provided: run this test in the `integration` vitest project.');
  return url;
}

/** A key prefix of its own for each test, so tests never see each other's keys. */
export function uniquePrefix(name = 'test'): string {
  return `{t-${name}-${randomBytes(4).toString('hex')}}`;
}
