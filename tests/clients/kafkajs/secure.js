// kafkajs against `passbook serve --tls-cert … --sasl scram-sha-256,plain
// --authorize --super-users User:admin`: ssl + sasl with SCRAM-SHA-256
// and PLAIN, a producer and a consumer group allowed by ACLs, a denied
// topic and a wrong password with Kafka's errors.
// Usage: node secure.js HOST:PORT CA.pem
'use strict'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { check, assert, sleep, summary } = require('./check')

const [addr, caFile] = process.argv.slice(2)
const ssl = { ca: [fs.readFileSync(caFile, 'utf8')] }
const client = (mechanism, username, password) =>
  new Kafka({ clientId: 'passbook-kafkajs-secure', brokers: [addr], logLevel: logLevel.NOTHING, ssl, sasl: { mechanism, username, password }, retry: { retries: 0 } })

async function main() {
  const N = 200
  await check('ssl + sasl scram-sha-256 (alice): produce 200 records to a topic her ACL allows', async () => {
    const producer = client('scram-sha-256', 'alice', 'alice-secret').producer()
    await producer.connect()
    const messages = Array.from({ length: N }, (_, i) => ({ key: `k-${i}`, value: `secure-${i}` }))
    await producer.send({ topic: 'secure', acks: -1, messages })
    await producer.disconnect()
  })
  await check('ssl + sasl plain (alice): her consumer group reads them back', async () => {
    const consumer = client('plain', 'alice', 'alice-secret').consumer({ groupId: 'secure-readers', maxWaitTimeInMs: 500 })
    await consumer.connect()
    await consumer.subscribe({ topics: ['secure'], fromBeginning: true })
    const got = []
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
    for (let waited = 0; waited < 30000 && got.length < N; waited += 100) await sleep(100)
    await consumer.disconnect()
    assert(got.length === N, `got ${got.length} records`)
    got.forEach((v, i) => assert(v === `secure-${i}`, `record ${i} is ${v}`))
  })
  await check('a topic her ACLs do not name: TOPIC_AUTHORIZATION_FAILED', async () => {
    const producer = client('scram-sha-256', 'alice', 'alice-secret').producer({ allowAutoTopicCreation: false })
    await producer.connect()
    try {
      await producer.send({ topic: 'payroll', messages: [{ value: 'no' }] })
      throw new Error('the send succeeded')
    } catch (err) {
      const text = `${err.type} ${err.message} ${(err.originalError && err.originalError.type) || ''}`
      assert(/TOPIC_AUTHORIZATION_FAILED|not authorized to access topics/i.test(text), text)
    } finally {
      await producer.disconnect()
    }
  })
  await check('a wrong password: SASL authentication failed with Kafka\'s message', async () => {
    const admin = client('scram-sha-256', 'alice', 'wrong-secret').admin()
    try {
      await admin.connect()
      await admin.listTopics()
      throw new Error('connected')
    } catch (err) {
      const text = `${err.type} ${err.message}`
      assert(/Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/.test(text), text)
    } finally {
      await admin.disconnect()
    }
  })
  await check('the super user (plain) lists the topics', async () => {
    const admin = client('plain', 'admin', 'admin-secret').admin()
    await admin.connect()
    const topics = await admin.listTopics()
    await admin.disconnect()
    assert(topics.includes('secure'), `topics: ${topics}`)
  })
  summary()
}

main().catch(err => {
  console.log(`FAIL unexpected: ${err.stack}`)
  process.exitCode = 1
})
