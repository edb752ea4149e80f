// Installs the locked dependencies when node_modules is missing or older than package-lock.json, so `npm test` and
// `npm start` work on a fresh clone with nothing installed by hand. Plain Node: it runs before anything is installed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const stamp = path.join(root, 'node_modules', '.melvin-lock-hash');
const lockHash = createHash('sha256')
  .update(readFileSync(path.join(root, 'package-lock.json')))
  .digest('hex');

if (existsSync(stamp) && readFileSync(stamp, 'utf8') === lockHash) process.exit(0);

console.error('Installing dependencies from package-lock.json…');
// Not `npm ci`: registry mirrors that lack other platforms' optional binaries (here, @swc/core-darwin-*) leave those
// out of the lock file, which `npm ci` rejects. `npm install --no-save` installs the locked versions, skips what this
// platform cannot use, and leaves package-lock.json untouched.
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const result = spawnSync(npm, ['install', '--no-save', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  console.error('npm install failed; see the output above.');
  process.exit(result.status ?? 1);
}
writeFileSync(stamp, lockHash);
