import { describe, expect, it, vi } from 'vitest';
import { AgentError } from '../errors.js';
import { SdkLoader } from './sdk-loader.js';

describe('SdkLoader', () => {
  it('imports nothing until a first call, then the package once for every provider', async () => {
    const load = vi.fn(async () => ({ version: 1 }));
    const loader = new SdkLoader('some-sdk', load);
    const buildA = vi.fn((sdk: { version: number }) => ({ client: 'a', version: sdk.version }));
    const a = loader.prepare('profile-a', buildA);
    const b = loader.prepare('profile-b', (sdk) => ({ client: 'b', version: sdk.version }));
    expect(load).not.toHaveBeenCalled();
    const [first, again] = await Promise.all([a(), a()]);
    expect(first).toEqual({ client: 'a', version: 1 });
    expect(again).toBe(first);
    expect(await b()).toEqual({ client: 'b', version: 1 });
    expect(load).toHaveBeenCalledTimes(1);
    expect(buildA).toHaveBeenCalledTimes(1);
  });

  it('fails with ERR_AGENT_INTERNAL naming the provider and the package', async () => {
    const cause = new Error('Cannot find package');
    const loader = new SdkLoader('some-sdk', () => Promise.reject(cause));
    const error = await loader
      .prepare('profile-a', () => 'never')()
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(AgentError);
    expect(error).toMatchObject({
      code: 'ERR_AGENT_INTERNAL',
      message: 'profile-a: cannot load some-sdk: Error: Cannot find package',
      cause,
    });
  });
});
