// Installs the MCP conformance tooling (Node 22 from the `node` npm package, the MCP Inspector CLI, the conformance
// suite, and the reference "everything" server) into a cache outside the clone, once per version set.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cacheDir } from './temporal-cli';

const PACKAGES = {
  node: '22.23.3',
  '@modelcontextprotocol/inspector': '2.12.0',
  '@modelcontextprotocol/conformance': '0.1.16',
  '@modelcontextprotocol/server-everything': '2026.8.31',
};

export interface McpTools {
  node22: string;
  inspectorCli: string;
  conformanceCli: string;
  everythingServer: string;
}

export async function ensureMcpTools(log: (line: string) => void = (line) => console.error(line)): Promise<McpTools> {
  const hash = createHash('sha256').update(JSON.stringify(PACKAGES)).digest('hex').slice(0, 12);
  const dir = path.join(cacheDir(), `mcp-tools-${hash}`);
  const modules = path.join(dir, 'node_modules');
  const tools: McpTools = {
    node22: path.join(modules, '.bin', 'node'),
    inspectorCli: path.join(modules, '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js'),
    conformanceCli: path.join(modules, '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
    everythingServer: path.join(modules, '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'),
  };
  if (Object.values(tools).every((file) => existsSync(file))) return tools;
  mkdirSync(dir, { recursive: true });
  // The `node` package fetches its platform's binary in an install script, which npm runs only when allowed.
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify(
      { name: 'melvin-mcp-tools', private: true, allowScripts: { node: true }, dependencies: PACKAGES },
      null,
      2,
    ),
  );
  log(`Installing the MCP conformance tools (Node ${PACKAGES.node}, Inspector, conformance suite) into ${dir}…`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // Asynchronous, so the global setup builds the Temporal server meanwhile.
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(npm, ['install', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`npm install of the MCP tools failed in ${dir}`);
  const missing = Object.entries(tools).filter(([, file]) => !existsSync(file));
  if (missing.length) throw new Error(`the MCP tools install lacks ${missing.map(([name]) => name).join(', ')}`);
  return tools;
}
