'use strict';
module.exports = () => 'stats';
