// SPDX-License-Identifier: Apache-2.0
/*
 * A MySQL client for the NETWORK tests: npm mysql2 (tests/programs/npm-deps.sh installs it)
 * on one plaintext connection to 127.0.0.1:PORT as root, no database.
 *
 *   node mysql2_client.js NPMDIR PORT N_QUERY N_EXEC [GOFILE]
 *
 * Waits for GOFILE if given (20 s at most), then: CREATE DATABASE d, CREATE TABLE d.t, INSERT
 * of three rows (query(), COM_QUERY each); N_QUERY query("SELECT a FROM d.t"); N_EXEC
 * execute("SELECT a FROM d.t WHERE a = ?", [i]) (mysql2 prepares a text once per connection:
 * one COM_STMT_PREPARE, then a COM_STMT_EXECUTE each); query("SELECT a FROM d.nosuch") and
 * execute("SELECT a FROM d.nosuch WHERE a = ?") (ER_NO_SUCH_TABLE, 1146, to the COM_QUERY and
 * to the COM_STMT_PREPARE); end(). Prints what mysql2 returned:
 *
 *   setup=3 query=N rows=R exec=N exec_rows=R errors=2 codes=1146,1146
 *
 * a count going up only on success, codes the errno of each error in order.
 */
'use strict';

const fs = require('fs');
const path = require('path');

async function main() {
	const [npmdir, port, nq, ne, gofile] = process.argv.slice(2);
	const mysql = require(path.resolve(npmdir, 'node_modules', 'mysql2', 'promise'));
	if (gofile) {
		for (let i = 0; i < 400 && !fs.existsSync(gofile); i++)
			await new Promise((r) => setTimeout(r, 50));
	}
	const c = { setup: 0, query: 0, rows: 0, exec: 0, exec_rows: 0, errors: 0 };
	const codes = [];
	const conn = await mysql.createConnection({
		host: '127.0.0.1', port: Number(port), user: 'root', connectTimeout: 10000,
	});
	for (const s of ['CREATE DATABASE d', 'CREATE TABLE d.t (a INT)',
		'INSERT INTO d.t VALUES (1),(2),(3)']) {
		await conn.query(s);
		c.setup++;
	}
	for (let i = 0; i < Number(nq); i++) {
		const [rows] = await conn.query('SELECT a FROM d.t');
		c.query++;
		c.rows += rows.length;
	}
	for (let i = 0; i < Number(ne); i++) {
		const [rows] = await conn.execute('SELECT a FROM d.t WHERE a = ?', [i % 4]);
		c.exec++;
		c.exec_rows += rows.length;
	}
	for (const run of [() => conn.query('SELECT a FROM d.nosuch'),
		() => conn.execute('SELECT a FROM d.nosuch WHERE a = ?', [1])]) {
		try {
			await run();
		} catch (e) {
			c.errors++;
			codes.push(e.errno);
		}
	}
	await conn.end();
	console.log(Object.entries(c).map(([k, v]) => `${k}=${v}`).join(' ') +
		` codes=${codes.join(',')}`);
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
