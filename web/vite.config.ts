import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// `make ui` builds into bundle/dist, which the Go package web embeds.
// `npm run dev` serves the sources with the API of a local `windlass dev`
// (WINDLASS_API, default http://127.0.0.1:8080) behind /api.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'bundle/dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 800,
  },
  server: {
    proxy: {
      '/api': { target: process.env.WINDLASS_API ?? 'http://127.0.0.1:8080', changeOrigin: false },
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
