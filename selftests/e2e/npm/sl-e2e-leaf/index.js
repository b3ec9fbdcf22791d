'use strict';
module.exports = (s) => `[${s}]`;
