'use strict';
/* The telemetry call of a real install script: node's https, which ignores HTTPS_PROXY, sending
 * the host name and the working directory. Its failure never fails the install (as in the
 * packages it imitates), so whether it got out is judged at the telemetry host and in the log. */
const https = require('https');
const os = require('os');
const url = 'https://telemetry.pkgstats.example/v1/install?pkg=sl-e2e-stats&host=' +
	encodeURIComponent(os.hostname()) + '&cwd=' + encodeURIComponent(process.cwd());
const req = https.get(url, { timeout: 10000 }, (res) => {
	console.log(`sl-e2e-stats: telemetry sent (${res.statusCode})`);
	res.resume();
});
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (e) => console.log(`sl-e2e-stats: telemetry failed: ${e.code || e.message}`));
