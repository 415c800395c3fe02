// The companion's entry to the one ESLint config (eslint.base.mjs), with the tools of this package.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

import config from '../eslint.base.mjs';

export default config(js, tseslint);
