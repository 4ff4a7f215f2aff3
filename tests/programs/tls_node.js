// A Node.js TLS peer for the NETWORK TLS tests (node's own modules only). /usr/bin/node from
// NodeSource links OpenSSL statically: its SSL_read/SSL_write are in the executable, and it
// drives them through memory BIOs, so no socket call happens inside them.
//
//   node tls_node.js server PORT CERT KEY   https on 127.0.0.1:PORT, HTTP/1.1:
//                                           /ok* -> 200 "ok\n", /missing -> 404, /fail -> 500,
//                                           others 404; prints "ready" once it listens and, on
//                                           SIGTERM, "totals 200=N 404=N 500=N" (responses
//                                           written), then exits
//   node tls_node.js client URL N [GOFILE]  N sequential GETs through one kept-alive socket,
//                                           certificate not verified; with GOFILE it first
//                                           waits (20 s at most) for that file to exist;
//                                           prints "totals CODE=N ..." of the responses read
'use strict';
const fs = require('fs');
const https = require('https');

const totals = new Map([[200, 0], [404, 0], [500, 0]]);

function count(code) {
  totals.set(code, (totals.get(code) || 0) + 1);
}

function line() {
  const codes = [...totals.keys()].sort((a, b) => a - b);
  return 'totals ' + codes.map((c) => `${c}=${totals.get(c)}`).join(' ');
}

function server(port, cert, key) {
  const srv = https.createServer(
    { cert: fs.readFileSync(cert), key: fs.readFileSync(key), ALPNProtocols: ['http/1.1'] },
    (req, res) => {
      const path = req.url.split('?')[0];
      let code = 404;
      let body = 'missing\n';
      if (path.startsWith('/ok')) {
        code = 200;
        body = 'ok\n';
      } else if (path === '/fail') {
        code = 500;
        body = 'fail\n';
      }
      res.writeHead(code, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
      res.end(body);
      count(code);
    });
  // Node's default keep-alive timeout (5 s) would close idle test connections mid-test.
  srv.keepAliveTimeout = 60000;
  process.on('SIGTERM', () => {
    process.stdout.write(line() + '\n', () => process.exit(0));
  });
  srv.listen(port, '127.0.0.1', () => console.log('ready'));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function get(agent, url) {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { agent, rejectUnauthorized: false }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode));
      res.on('error', reject);
    });
    req.setTimeout(30000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function client(url, n, gofile) {
  if (gofile) {
    for (let i = 0; i < 400 && !fs.existsSync(gofile); i++)
      await sleep(50);
  }
  // One socket, kept alive: the N requests share one TLS connection.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
  let failed = null;
  for (let i = 0; i < n; i++) {
    try {
      count(await get(agent, url));
    } catch (e) {
      failed = e;
      break;
    }
  }
  agent.destroy();
  console.log(line());
  if (failed) {
    console.error('tls_node:', failed.message);
    process.exitCode = 1;
  }
}

const a = process.argv.slice(2);
if (a.length === 4 && a[0] === 'server') {
  server(Number(a[1]), a[2], a[3]);
} else if ((a.length === 3 || a.length === 4) && a[0] === 'client') {
  client(a[1], Number(a[2]), a[3]);
} else {
  console.error('usage: tls_node.js server PORT CERT KEY | client URL N [GOFILE]');
  process.exit(2);
}
