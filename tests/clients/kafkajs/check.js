// The bookkeeping test.js and secure.js share: each check prints ok or
// FAIL with its name, and summary prints the count run.sh reads.
'use strict'
let passed = 0
let failed = 0

async function check(name, fn) {
  try {
    await fn()
    passed++
    console.log(`ok   ${name}`)
  } catch (err) {
    failed++
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`)
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg)
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function summary() {
  console.log(`node: ${passed} passed, ${failed} failed`)
}

module.exports = { check, assert, sleep, summary }
