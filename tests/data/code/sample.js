const fs = require("fs");

/**
 * Reads a file.
 */
async function read(path) {
  return fs.promises.readFile(path, "utf8");
}

class Cache {
  constructor() {
    this.map = new Map();
  }

  // Gets it.
  get(key) {
    return this.map.get(key);
  }

  static create() {
    return new Cache();
  }
}

module.exports = { read, Cache };
