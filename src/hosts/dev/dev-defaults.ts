/** The port `trellis dev` listens on unless told otherwise. Apart from the server so the CLI can show it without loading it. */
export const DEFAULT_DEV_PORT = 4477;
