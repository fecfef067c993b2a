import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedAddress } from './address-rules.js';
import { OutboundError } from './errors.js';
import { createOutboundFetch, readBodyCapped } from './outbound-fetch.js';
import { checkOutboundUrl } from './outbound-url.js';

const STRICT = { allowHttp: false, allowPrivate: false };
const TESTS = { allowHttp: true, allowPrivate: true };

function refusedCode(call: () => unknown): string | undefined {
  try {
    call();
    return undefined;
  } catch (error) {
    return error instanceof OutboundError ? error.code : 'other';
  }
}

describe('refusedAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.1.1',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a00:1',
  ])('refuses %s unless private addresses are allowed', (address) => {
    expect(refusedAddress(address, { allowPrivate: false })).toMatch(/loopback, private/);
    expect(refusedAddress(address, { allowPrivate: true })).toBeUndefined();
  });

  it.each(['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254', '100.100.100.200', '169.254.170.2'])(
    'refuses the metadata address %s always',
    (address) => {
      expect(refusedAddress(address, { allowPrivate: true })).toMatch(/metadata/);
    },
  );

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])(
    'allows the public address %s',
    (address) => {
      expect(refusedAddress(address, { allowPrivate: false })).toBeUndefined();
    },
  );

  it('refuses what is not an address', () => {
    expect(refusedAddress('example.com', { allowPrivate: true })).toMatch(/not an IP address/);
  });
});

describe('checkOutboundUrl', () => {
  it('takes public https URLs', () => {
    expect(checkOutboundUrl('https://hooks.example.com/a?b=1', STRICT).hostname).toBe('hooks.example.com');
    expect(checkOutboundUrl('https://8.8.8.8/x', STRICT).hostname).toBe('8.8.8.8');
  });

  it.each([
    ['http://hooks.example.com/', /only https/],
    ['ftp://hooks.example.com/', /only https/],
    ['not a url', /not an absolute URL/],
    ['https://user:pass@hooks.example.com/', /credentials/],
    ['https://127.0.0.1:8080/', /loopback, private/],
    ['https://[::1]/', /loopback, private/],
    ['https://localhost/', /loopback name/],
    ['https://api.localhost/', /loopback name/],
    ['https://169.254.169.254/latest/meta-data', /metadata/],
    ['https://[fd00:ec2::254]/', /metadata/],
    [`https://example.com/${'a'.repeat(2_100)}`, /longer than 2048/],
  ])('refuses %s, saying why', (url, why) => {
    expect(() => checkOutboundUrl(url, STRICT)).toThrow(why);
    expect(refusedCode(() => checkOutboundUrl(url, STRICT))).toBe('ERR_URL_REFUSED');
  });

  it('allows http and private hosts only when the operator does, metadata never', () => {
    expect(checkOutboundUrl('http://127.0.0.1:3000/hook', TESTS).port).toBe('3000');
    expect(checkOutboundUrl('http://localhost/hook', TESTS).hostname).toBe('localhost');
    expect(() => checkOutboundUrl('http://169.254.169.254/', TESTS)).toThrow(/metadata/);
  });
});

describe('createOutboundFetch', () => {
  let server: Server;
  let port = 0;
  const hung: Array<() => void> = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/redirect') {
        response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      } else if (request.url === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('x'.repeat(300_000));
      } else if (request.url === '/hang') {
        hung.push(() => response.destroy());
      } else {
        response.writeHead(200, { 'content-type': 'text/plain' }).end(`hello ${request.method}`);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const end of hung) end();
    await new Promise((resolve) => server.close(resolve));
  });

  it('calls an allowed URL', async () => {
    const response = await createOutboundFetch(TESTS)(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      body: 'x',
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('hello POST');
  });

  it('refuses a private address by default, before any connection', async () => {
    await expect(
      createOutboundFetch({ allowHttp: true, allowPrivate: false })(`http://127.0.0.1:${port}/`),
    ).rejects.toThrow(/loopback, private/);
  });

  it('checks the address a name resolves to when it connects (DNS rebinding)', async () => {
    const rebinding = ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) =>
      callback(null, [{ address: '127.0.0.1', family: 4 }])) as never;
    const strict = createOutboundFetch({ allowHttp: true, allowPrivate: false }, { lookup: rebinding });
    const error = await strict(`http://rebind.example.com:${port}/`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).code).toBe('ERR_URL_REFUSED');
    expect((error as Error).message).toMatch(/rebind\.example\.com is refused: it resolves to 127\.0\.0\.1/);
    // The same name is reached when private addresses are allowed.
    const open = createOutboundFetch(TESTS, { lookup: rebinding });
    expect((await open(`http://rebind.example.com:${port}/`)).status).toBe(200);
  });

  it('never follows a redirect', async () => {
    const response = await createOutboundFetch(TESTS)(`http://127.0.0.1:${port}/redirect`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('http://127.0.0.1:1/elsewhere');
  });

  it('fails a body larger than the cap, and readBodyCapped keeps its first bytes', async () => {
    const call = createOutboundFetch(TESTS, { maxResponseBytes: 65_536 });
    const error = await (await call(`http://127.0.0.1:${port}/big`)).text().catch((e: unknown) => e);
    expect((error as OutboundError).code).toBe('ERR_RESPONSE_TOO_LARGE');
    const capped = await readBodyCapped(await call(`http://127.0.0.1:${port}/big`), 1_000);
    expect(capped).toEqual({ text: 'x'.repeat(1_000), truncated: true });
    const whole = await readBodyCapped(await call(`http://127.0.0.1:${port}/`), 1_000);
    expect(whole).toEqual({ text: 'hello GET', truncated: false });
  });

  it('gives up on a server that does not answer after the timeout', async () => {
    const started = Date.now();
    const error = await createOutboundFetch(TESTS, { timeoutMs: 300 })(`http://127.0.0.1:${port}/hang`).catch(
      (e: unknown) => e,
    );
    expect((error as OutboundError).code).toBe('ERR_OUTBOUND_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
