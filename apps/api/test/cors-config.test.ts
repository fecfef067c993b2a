import { describe, expect, it } from 'vitest';
import { loadApiConfig, parseCorsOrigins } from '../src/config.js';

function origins(raw: string | undefined) {
  const problems: string[] = [];
  return { origins: parseCorsOrigins(raw, (problem) => problems.push(problem)), problems };
}

describe('TETHER_CORS_ORIGINS', () => {
  it('is empty by default: no CORS', () => {
    expect(loadApiConfig({}).corsOrigins).toEqual([]);
    expect(origins('  ')).toEqual({ origins: [], problems: [] });
  });

  it('reads a comma-separated list of exact origins, and * alone', () => {
    expect(origins('https://app.example.com, http://localhost:5173,https://app.example.com')).toEqual({
      origins: ['https://app.example.com', 'http://localhost:5173'],
      problems: [],
    });
    expect(origins('http://[::1]:8080').origins).toEqual(['http://[::1]:8080']);
    expect(origins('*')).toEqual({ origins: ['*'], problems: [] });
  });

  it('refuses what is not an origin as browsers send it, naming the entry and the origin meant', () => {
    const { problems } = origins(
      'https://app.example.com/,app.example.com,ftp://files.example.com,https://App.Example.com,https://a.example.com:443,https://a.example.com/path?q=1,https://user@a.example.com',
    );
    expect(problems).toEqual([
      'TETHER_CORS_ORIGINS entry 1 ("https://app.example.com/") must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: https://app.example.com',
      'TETHER_CORS_ORIGINS entry 2 ("app.example.com") must be an origin scheme://host[:port] with scheme http or https',
      'TETHER_CORS_ORIGINS entry 3 ("ftp://files.example.com") must be an origin scheme://host[:port] with scheme http or https',
      'TETHER_CORS_ORIGINS entry 4 ("https://App.Example.com") must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: https://app.example.com',
      'TETHER_CORS_ORIGINS entry 5 ("https://a.example.com:443") must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: https://a.example.com',
      'TETHER_CORS_ORIGINS entry 6 ("https://a.example.com/path?q=1") must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: https://a.example.com',
      'TETHER_CORS_ORIGINS entry 7 ("https://user@a.example.com") must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: https://a.example.com',
    ]);
    expect(origins('*,https://app.example.com').problems).toEqual([
      'TETHER_CORS_ORIGINS: * allows every origin and must stand alone',
    ]);
    expect(origins('https://a.example.com,,https://b.example.com').problems).toHaveLength(1);
  });

  it('stops the start with the configuration error naming the variable', () => {
    expect(() => loadApiConfig({ TETHER_CORS_ORIGINS: 'https://app.example.com/' })).toThrow(
      /TETHER_CORS_ORIGINS entry 1/,
    );
  });
});
