// myshop's own client entry: what the build's generated one does, plus whatever the team
// adds around it (analytics, a service worker...).
import { start } from 'sidecar-ssr-renderer/client';
import * as app from './pages.jsx';

start(app);
