// Preloaded into @portkey-ai/gateway's node server (node --import ./loopback.mjs ...) by
// gateway-bench.sh. Its start-server.js takes only --port=N and listens on every interface;
// this keeps it on 127.0.0.1 and prints the port it really got (with --port=0 it picks a free
// one) as "listening on http://127.0.0.1:PORT" on stderr, like the fake and Switchyard do.
import http from 'node:http';

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
    if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
        const port = Number(args[0]);
        const rest = args.slice(1);
        if (typeof rest[0] !== 'string') rest.unshift('127.0.0.1');
        else rest[0] = '127.0.0.1';
        args = [port, ...rest];
    } else if (args[0] && typeof args[0] === 'object') {
        args[0] = { ...args[0], host: '127.0.0.1' };
    }
    this.once('listening', () => {
        const a = this.address();
        process.stderr.write(`listening on http://127.0.0.1:${a.port}\n`);
    });
    return listen.apply(this, args);
};
