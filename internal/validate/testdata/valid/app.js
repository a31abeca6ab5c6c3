'use strict'

const path = require('path')

function join (a, b) {
  return path.join(a, b)
}

module.exports = { join }
