/** @type {import('@react-router/dev/config').Config} */
export default {
  // Server-side rendering of every request, as the bench compares it with the other servers.
  ssr: true,
};
