// The tools some test files need from outside npm (the Temporal server, the MCP conformance suite, Chromium, a Go
// module), found or built once by the global setup before any test starts, so no test waits on a build in its hooks.
import { spawn } from 'node:child_process';
import { ensureChromium } from '../../harness/chromium';
import { ensureMcpTools } from '../../harness/mcp-tools';
import { temporalServerTools } from '../../harness/postgres-temporal';
import { errorMessage } from '../../src/observability/error-message';
import type { Requirement } from './requirements';

/** The Compose Specification's schema ships in this Go module; test/unit/compose.test.ts validates against it. */
export const COMPOSE_GO = 'github.com/compose-spec/compose-go/v2@v2.16.2';

interface MachineTool {
  name: string;
  /** The test files that use it: the tool is prepared only when the run includes one of them. */
  usedBy: string[];
  /** What the machine must have for the tool to be had at all; without it the tests say why they skip. */
  needs: Requirement[];
  prepare: (log: (line: string) => void) => Promise<unknown>;
}

function goModDownload(module: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['mod', 'download', '-json', module], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`go mod download ${module}: ${stderr}`))));
  });
}

const TOOLS: MachineTool[] = [
  {
    name: 'the Temporal server and its SQL tool',
    usedBy: ['test/e2e/postgres-topology.test.ts'],
    needs: ['Go', 'PostgreSQL'],
    prepare: (log) => temporalServerTools(log),
  },
  {
    name: 'the Compose Specification schema',
    usedBy: ['test/unit/compose.test.ts'],
    needs: ['Go'],
    prepare: () => goModDownload(COMPOSE_GO),
  },
  {
    name: 'the MCP conformance tools',
    usedBy: ['test/sandbox/mcp-conformance.test.ts', 'test/workflows/mcp-servers.test.ts'],
    needs: [],
    prepare: async (log) => ensureMcpTools(log),
  },
  {
    name: 'Chromium',
    usedBy: ['test/e2e/stack.test.ts', 'test/e2e/encryption.test.ts'],
    needs: ['Chromium'],
    prepare: async (log) => ensureChromium(log),
  },
];

/**
 * Prepares, side by side, every tool a file of this run uses (`patterns` are jest's test path patterns; none means the
 * whole suite). A tool that cannot be had is reported, not thrown: its tests then fail or skip saying why.
 */
export async function prepareMachineTools(
  patterns: string[],
  missing: Partial<Record<Requirement, string>>,
  log: (line: string) => void,
): Promise<void> {
  const inRun = (file: string) => patterns.length === 0 || patterns.some((pattern) => new RegExp(pattern).test(file));
  const wanted = TOOLS.filter((tool) => tool.usedBy.some(inRun) && tool.needs.every((need) => !missing[need]));
  await Promise.all(
    wanted.map(async (tool) => {
      const started = Date.now();
      try {
        await tool.prepare(log);
        log(`Ready: ${tool.name} (${Math.round((Date.now() - started) / 1000)} s)`);
      } catch (err) {
        log(`Could not prepare ${tool.name}: ${errorMessage(err)}`);
      }
    }),
  );
}
