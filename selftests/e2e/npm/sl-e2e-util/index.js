'use strict';
const leaf = require('sl-e2e-leaf');
module.exports = (s) => leaf(s.toUpperCase());
