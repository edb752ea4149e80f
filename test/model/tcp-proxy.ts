// A loopback TCP relay between a worker and Temporal: cutting it makes the worker vanish for the server as a killed
// process does (its connections reset, nothing it finishes is ever reported), while the test process lives on.
import net from 'node:net';

export class TcpProxy {
  /** Once cut, connections are taken and never answered: the worker's calls hang as calls to a dead peer do. */
  private cutOff = false;

  private constructor(
    private readonly server: net.Server,
    private readonly sockets: Set<net.Socket>,
    readonly address: string,
  ) {}

  /** Listens on a free loopback port and relays each connection to `target` (`host:port`). */
  static async start(target: string): Promise<TcpProxy> {
    const [host, port] = target.split(':') as [string, string];
    const sockets = new Set<net.Socket>();
    const track = (socket: net.Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    };
    const server = net.createServer((client) => {
      track(client);
      client.on('error', () => client.destroy());
      if (proxy.cutOff) return;
      const upstream = net.connect(Number(port), host);
      track(upstream);
      // A reset on one side ends the other; the error itself is the cut, not a failure of the test.
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new TcpProxy(server, sockets, `127.0.0.1:${(server.address() as net.AddressInfo).port}`);
    return proxy;
  }

  /**
   * Every connection is reset; a new one is taken and never answered, so the worker's retries wait on it quietly
   * rather than failing in a loop.
   */
  cut(): void {
    this.cutOff = true;
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  /** Stops listening and drops every connection. */
  close(): void {
    this.server.close();
    for (const socket of this.sockets) socket.destroy();
  }
}
