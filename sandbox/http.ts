// Starts a sandbox HTTP app on a loopback port and stops it completely, open keep-alive connections included.
import type { Server } from 'node:http';
import type { Express } from 'express';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export function listen(app: Express, port = 0, host = '127.0.0.1'): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(port, host, (err?: Error) => {
      if (err) return reject(err);
      const address = server.address();
      if (address === null || typeof address === 'string') return reject(new Error('no TCP address'));
      resolve({
        url: `http://${host}:${address.port}`,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
    server.on('error', reject);
  });
}

/** A sandbox service: an Express app started on a loopback port, addressed at `urlPath` below it. */
export abstract class HttpService {
  private server: RunningServer | undefined;
  /** Kept across stop(), so an outage can end with the service back where clients expect it. */
  private lastPort = 0;

  protected constructor(
    private readonly serviceName: string,
    private readonly urlPath = '',
  ) {}

  abstract app(): Express;

  get url(): string {
    if (!this.server) throw new Error(`the ${this.serviceName} is not started`);
    return `${this.server.url}${this.urlPath}`;
  }

  async start(port = this.lastPort): Promise<string> {
    this.server = await listen(this.app(), port);
    this.lastPort = this.server.port;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }
}
