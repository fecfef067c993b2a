/**
 * pnpm's install hooks. openapi-typescript (a devDependency of apps/api, for the test that generates
 * a client's types from /openapi.json) builds its output with the TypeScript 5 compiler API, which
 * TypeScript 7 (the repo's tsc, a native binary) no longer has: it gets a TypeScript 5 of its own
 * rather than the workspace's as its peer.
 */
export const hooks = {
  readPackage(pkg) {
    if (pkg.name === 'openapi-typescript') {
      delete pkg.peerDependencies?.typescript;
      pkg.dependencies = { ...pkg.dependencies, typescript: '5.9.3' };
    }
    return pkg;
  },
};
