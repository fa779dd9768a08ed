// Runs the public cache-tests suite (https://github.com/http-tests/cache-tests) in its browser
// form (the tests a browser runs: neither cdn_only nor browser_skip) against BASE_URL, where
// scripts/cache-conformance.sh puts Courier's HTTP cache, and compares the result with the
// browsers' published ones, group by group. Writes the raw results to RESULTS_FILE.
//   node scripts/cache-conformance.mjs SUITE_DIR BASE_URL RESULTS_FILE
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suiteDir, baseUrl, resultsFile] = process.argv.slice(2)
const load = (file) => import(pathToFileURL(path.join(suiteDir, file)).href)
const { default: suites } = await load('tests/index.mjs')
const { determineTestResult } = await load('test-engine/lib/results.mjs')
const { runTests, getResults } = await load('test-engine/client/runner.mjs')
await runTests(suites, true, baseUrl)
fs.writeFileSync(resultsFile, JSON.stringify(getResults(), null, 2))
const peers = ['chrome', 'firefox', 'safari']
const results = { courier: getResults() }
for (const peer of peers) {
  results[peer] = JSON.parse(fs.readFileSync(path.join(suiteDir, 'results', `${peer}.json`), 'utf8'))
}
const passed = (who, id) => ['✅', 'Y'].includes(determineTestResult(suites, id, results[who])[2])

const rows = []
const totals = { tests: 0, required: 0 }
const failures = []
for (const suite of suites) {
  const tests = suite.tests.filter((test) => !test.cdn_only && !test.browser_skip)
  if (tests.length === 0) continue
  const row = { group: suite.name, tests: tests.length }
  for (const who of ['courier', ...peers]) {
    row[who] = tests.filter((test) => passed(who, test.id)).length
    const required = tests.filter((test) => test.kind === undefined || test.kind === 'required')
    row[`${who} required`] = required.filter((test) => passed(who, test.id)).length
    totals[who] = (totals[who] || 0) + row[who]
    totals[`${who} required`] = (totals[`${who} required`] || 0) + row[`${who} required`]
    if (who === 'courier') totals.required += required.length
  }
  totals.tests += tests.length
  for (const test of tests) {
    if (!passed('courier', test.id) && peers.some((peer) => passed(peer, test.id))) {
      const result = results.courier[test.id]
      failures.push(`${suite.name} | ${test.id} (${test.kind || 'required'}): ${test.name} -> ${JSON.stringify(result)}`)
    }
  }
  rows.push(row)
}
const best = (row) => Math.max(...peers.map((peer) => row[peer]))
console.log('| group | tests | Courier | Chrome | Firefox | Safari | best browser |')
console.log('|---|---|---|---|---|---|---|')
for (const row of rows) {
  const mark = row.courier < best(row) ? ' (behind)' : ''
  console.log(`| ${row.group} | ${row.tests} | ${row.courier}${mark} | ${row.chrome} | ${row.firefox} | ${row.safari} | ${best(row)} |`)
}
console.log(`| all | ${totals.tests} | ${totals.courier} | ${totals.chrome} | ${totals.firefox} | ${totals.safari} | |`)
console.log(`\nrequired tests passed: Courier ${totals['courier required']} of ${totals.required}; ` +
  peers.map((peer) => `${peer} ${totals[`${peer} required`]}`).join(', '))
console.log(`\nfailed here, passed by a browser (${failures.length}):`)
for (const line of failures) console.log(`  ${line}`)
