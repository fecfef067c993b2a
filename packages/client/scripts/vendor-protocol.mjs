#!/usr/bin/env node
// The build's last step: makes dist/ self-contained, so that the package installs with plain npm.
// @tether/protocol is a workspace package that is never published: its built .js and .d.ts files are
// copied into dist/vendor/protocol/, and every import of it in dist/ is rewritten to a relative path.
// Its own dependencies must be the client's too (same ranges), which this checks.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const NAME = '@tether/protocol';
const root = fileURLToPath(new URL('..', import.meta.url));
const protocolRoot = fileURLToPath(new URL('../../protocol/', import.meta.url));
const dist = join(root, 'dist');
const vendor = join(dist, 'vendor', 'protocol');

/** Every file under `dir`, as absolute paths. */
async function files(dir) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await files(path)));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

const isCode = (path) => path.endsWith('.js') || path.endsWith('.d.ts');

const client = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
const protocol = JSON.parse(await readFile(join(protocolRoot, 'package.json'), 'utf8'));
for (const [dependency, range] of Object.entries(protocol.dependencies ?? {})) {
  if (client.dependencies?.[dependency] !== range) {
    throw new Error(
      `${NAME} depends on ${dependency}@${range}: packages/client/package.json must list it in its dependencies with the same range, since the protocol is vendored into the client's dist/`,
    );
  }
}

await rm(vendor, { recursive: true, force: true });
// Without their source maps: those point at the protocol's sources, which the package does not ship
// (and a map comment whose file is missing fills every test log with a loader's warning).
const mapComment = /\n\/\/# sourceMappingURL=\S+\s*$/;
for (const source of (await files(join(protocolRoot, 'dist'))).filter(isCode)) {
  const target = join(vendor, relative(join(protocolRoot, 'dist'), source));
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, (await readFile(source, 'utf8')).replace(mapComment, '\n'));
}

const specifier = new RegExp(`(['"])${NAME.replace('/', '\\/')}\\1`, 'g');
let rewritten = 0;
for (const path of (await files(dist)).filter(isCode)) {
  const text = await readFile(path, 'utf8');
  let relativeIndex = relative(dirname(path), join(vendor, 'index.js')).split(sep).join('/');
  if (!relativeIndex.startsWith('.')) relativeIndex = `./${relativeIndex}`;
  const next = text.replace(specifier, (_, quote) => `${quote}${relativeIndex}${quote}`);
  if (next !== text) {
    await writeFile(path, next);
    rewritten++;
  }
  if (/['"]@tether\//.test(next))
    throw new Error(`${relative(root, path)} still imports a workspace package`);
}
console.log(`vendored ${NAME} into dist/vendor/protocol; ${rewritten} files of dist/ import it there`);
